"""Operating-system sandboxes for launched workers: the probe (`probe.py`, what `cocoplus sandbox doctor` and
every sandboxed launch run), the profiles the operator chooses (`profiles.py`) and the bubblewrap command line a
profile becomes (`bwrap.py`)."""
