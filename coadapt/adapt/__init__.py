"""Test-time adaptation: verifier, gate, advantages, LoRA trainer and the round loop.

Nothing here sees ground truth: the loop receives task cards (goal text and set-up), plays them
on phones that refuse to show app state, and learns only from what its verifier says.
"""
