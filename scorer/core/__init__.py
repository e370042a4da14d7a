"""scorer.core."""
