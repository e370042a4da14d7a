"""scorer.decision."""
