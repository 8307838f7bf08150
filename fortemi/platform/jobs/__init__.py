"""Jobs: durable rows in ``public.job``; a Dramatiq message only says "there is work"."""
