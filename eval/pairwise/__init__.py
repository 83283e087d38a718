"""Pairwise judging: two answers in both orders, and its agreement figures."""
