"""The device layer: observations, actions, UI trees, devices and the episode env."""
