"""The import edits a fixing pass queues, applied after the visit."""
