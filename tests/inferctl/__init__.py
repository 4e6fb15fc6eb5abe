"""Tests of the inferctl command-line tool, one package per sub-command."""
