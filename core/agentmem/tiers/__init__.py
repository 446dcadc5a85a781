"""Memory tiers: working memory, session tiers (mid-term, long-term) and knowledge."""
