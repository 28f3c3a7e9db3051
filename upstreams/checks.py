"""System checks: refuse to start with unusable ENCRYPTION_KEYS."""
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.checks import Error, register


@register()
def encryption_keys_are_fernet_keys(app_configs, **kwargs):
    errors = []
    for index, key in enumerate(settings.ENCRYPTION_KEYS):
        try:
            Fernet(key.encode())
        except (ValueError, TypeError):
            errors.append(Error(
                f"ENCRYPTION_KEYS item {index + 1} is not a Fernet key (32 url-safe base64 bytes).",
                hint="Make one with: python -c 'from cryptography.fernet import Fernet; "
                     "print(Fernet.generate_key().decode())'",
                id="upstreams.E001"))
    return errors
