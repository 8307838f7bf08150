"""Files kept with notes: content-addressed blobs, attachment rows, their extraction."""
