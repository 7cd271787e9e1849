"""Walks over a syntax tree whose cost stays bounded however deep the tree is.

tree-sitter stores no parent pointers: `Node.parent` walks down from the root to find the
node, so a walk up a parent chain costs the square of the depth. Code with an unclosed
bracket makes the tree that deep: `helper(x` typed in the middle of a Python file nests the
rest of the file inside the call, thousands of levels for a 16,000-line file, and a walk up
from the cursor cost a second per keystroke. Here a walk goes down from the root with a
cursor, or up at most `MAX_ANCESTORS` steps; a walk over a subtree visits at most
`MAX_VISITED` nodes.
"""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

MAX_ANCESTORS = 16
"""Steps up from a node. What the walks look for up there (the string or comment a cursor
is in, the statement a row starts, the definition a selection spans) sits a few levels
above the innermost node; farther up there is only nesting."""
MAX_VISITED = 20_000
"""Nodes a walk over a subtree visits at most (a subtree can be the rest of the file)."""


def ancestors(node: Node, limit: int = MAX_ANCESTORS) -> Iterator[Node]:
    """The node's parents, innermost first: at most `limit` of them."""
    parent = node.parent if limit > 0 else None
    steps = 1
    while parent is not None:
        yield parent
        if steps >= limit:
            return
        steps += 1
        parent = parent.parent


def top_level_at(root: Node, byte: int) -> Node | None:
    """The child of the root that holds `byte` (None between children or past the last):
    one step down with a cursor, however deep the tree below it."""
    cursor = root.walk()
    if cursor.goto_first_child_for_byte(byte) is None:
        return None
    node = cursor.node
    return node if node is not None and node.start_byte <= byte else None
