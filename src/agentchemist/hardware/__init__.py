"""Hardware adapters of the core: the Piper CAN codec and driver logic, a simulated Piper firmware."""
