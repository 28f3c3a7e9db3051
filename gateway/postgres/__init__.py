"""The database backend (DATABASES' ENGINE): Django's PostgreSQL backend, whose pool hands
out live connections only (base.py)."""
