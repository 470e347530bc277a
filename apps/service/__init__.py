"""specdraft."""
