"""scorer.evaluation."""
