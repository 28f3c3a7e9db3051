from django.apps import AppConfig


class ChatCompletionsConfig(AppConfig):
    name = "chat_completions"
    verbose_name = "Chat completions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # the run queue tells a chat completion's message from a response's, and the worker
        # finds its run, through this registration (responses_app imports no app above it)
        from responses_app.delivery.jobs import MessageKind, register_message_kind

        from .jobs import KIND, chat_job_of
        register_message_kind(MessageKind(KIND, chat_job_of, "chat_completions.worker.run.run_chat"))
