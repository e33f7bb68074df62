"""Test utilities: tiny random models (``harness.testing.tiny``); imports nothing heavy."""
