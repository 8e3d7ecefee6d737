"""The app's pages, a module each: its routes (``ROUTES``), its queries and what it shows."""
