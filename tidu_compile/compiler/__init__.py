"""The node compiler: backward programs, pipeline, plans and caches."""
