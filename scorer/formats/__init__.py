"""scorer.formats."""
