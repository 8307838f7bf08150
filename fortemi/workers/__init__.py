"""Background work: the job record, its handlers, and the Dramatiq workers that run them."""
