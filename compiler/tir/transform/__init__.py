"""Passes over lowered functions; each takes and returns a PrimFunc."""
