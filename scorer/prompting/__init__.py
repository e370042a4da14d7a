"""scorer.prompting."""
