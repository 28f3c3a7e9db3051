"""The Responses API: tenants and keys, stored responses, the API views and the run worker."""
