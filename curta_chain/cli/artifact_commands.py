"""Subcommands (being built)."""

import argparse


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add this module's subcommands."""
