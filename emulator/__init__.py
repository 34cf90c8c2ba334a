"""Device pools: real emulators and virtual devices served over the ADB protocol.

`virtual.VirtualDevice` serves a simulated phone over the ADB device transport (in a thread);
`manager` runs such devices as detached processes with a state file (`coadapt emulator start
--virtual N`); `avd` launches real Android emulators; `adb_server.AdbServer` runs a private adb
server (the binary bundled with adbutils) for tests, benchmarks and pools.
"""
