"""Exploration: screen identity, the UI transition graph, the explorer, curiosity terms, task
proposal and exploration memory. Reads trajectories and screens; never app state."""
