"""`cocoplus top`: the live terminal view (Textual; imported by `cocoplus top` only)."""
