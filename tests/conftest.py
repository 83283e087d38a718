"""Shared pytest configuration: fixture modules are registered here."""

pytest_plugins = ["tests.fixtures_models", "tests.fixtures_slurm", "tests.fixtures_serve", "tests.fixtures_train"]
