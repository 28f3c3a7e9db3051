"""The Conversations API as its own app: conversations and their items (models, services,
selectors, views, routes, admin). The responses side reads a conversation's items as a
response's history and appends each turn through `conversations.items`; nothing here
imports the responses side's services or worker."""
