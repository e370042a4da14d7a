"""scorer.serving."""
