"""cocoplus: continuity and operator control for long-running AI coding agents."""

__version__ = "0.2.0"
