"""scorer.scoring."""
