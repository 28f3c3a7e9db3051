from django.apps import AppConfig


class ChatCompletionsConfig(AppConfig):
    name = "chat_completions"
    verbose_name = "Chat completions"
    default_auto_field = "django.db.models.BigAutoField"
