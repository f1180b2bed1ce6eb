"""Load drivers: real load generators behind one interface (drivers/base.py: a LoadSpec in, a
LoadResult out), each declared in config/driver_registry.py, which imports a driver's class on first use."""
