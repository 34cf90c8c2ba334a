"""The VLM policy: model loading, prompts, action parsing, generation."""
