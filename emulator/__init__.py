"""Device pools: real emulators and virtual devices served over the ADB protocol."""
