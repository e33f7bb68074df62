"""Benchmark scripts (``headscope bench ...``): hybrid, ram, adaptive, masks, ttft.

What they share (parser, plan, timing, device sync) is :mod:`harness.bench.kit`.
"""
