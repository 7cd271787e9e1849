"""Next-edit predictions: the edit after this one, near the cursor."""
