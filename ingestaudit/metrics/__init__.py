"""Pure metric functions: no I/O, each unit-tested against hand-worked or published values."""
