"""Test doubles that speak real wire protocols, shared by tests, benchmarks and the demo."""
