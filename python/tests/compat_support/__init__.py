"""Helpers of the gguf-py compatibility tests: sample files and reader comparisons."""
