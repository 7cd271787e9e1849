"""Syntax: tree-sitter grammars, trees and queries."""
