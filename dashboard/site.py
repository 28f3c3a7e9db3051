"""The admin site: branded with the product's name, its index the dashboard (views.py),
its model names in plain words. Staff-only like every admin page (AdminSite.admin_view)."""
from django.contrib import admin

# Model names as an operator says them (the models' own names stay: renaming them would
# change their migrations).
PLAIN_NAMES = {
    ("responses_app", "StoredResponse"): "Responses",
    ("mcp_tools", "McpServer"): "MCP servers",
    ("accounting", "ResponseUsage"): "Usage per response",
    ("accounting", "DailyUsage"): "Usage per day",
    ("accounting", "TenantLimits"): "Limits per tenant",
    ("upstreams", "UpstreamRoute"): "Upstream routes",
    ("auth", "User"): "Admin users",
    ("auth", "Group"): "Admin groups",
}
PLAIN_APPS = {"auth": "Admin users"}


class GatewayAdminSite(admin.AdminSite):
    site_header = "Responses gateway"
    site_title = "Responses gateway"
    index_title = "Dashboard"
    site_url = "/readyz"  # "View site": the deployment's readiness (the root has no page)

    def index(self, request, extra_context=None):
        from .views import dashboard_page

        return dashboard_page(self, request)

    def get_app_list(self, request, app_label=None):
        apps = super().get_app_list(request, app_label)
        for app in apps:
            app["name"] = PLAIN_APPS.get(app["app_label"], app["name"])
            for model in app["models"]:
                key = (app["app_label"], model["object_name"])
                model["name"] = PLAIN_NAMES.get(key, model["name"])
        return apps
