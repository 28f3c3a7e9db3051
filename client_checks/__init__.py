"""Client compatibility checks: the installed `openai` SDK driven against a deployment
(`python manage.py check_clients`), each check reporting pass or fail with its reason."""
