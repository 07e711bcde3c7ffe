"""An emulated cluster with shared caches, memory controllers and NUMA.

All figures it produces are simulated. The public API is documented here
once the driver lands.
"""
