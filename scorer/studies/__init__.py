"""scorer.studies."""
