"""Rigid-equivalent analysis of cut loops and run monitors (singular configurations)."""
