"""App configs: the dashboard's own, and the admin's, whose default site is ours (its
index is the dashboard; see site.py)."""
from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class DashboardConfig(AppConfig):
    default = True
    name = "dashboard"
    verbose_name = "Dashboard"
    default_auto_field = "django.db.models.BigAutoField"


class GatewayAdminConfig(admin_apps.AdminConfig):
    """`django.contrib.admin` with the gateway's site (in INSTALLED_APPS in its place)."""

    default = False  # this module's default is DashboardConfig
    default_site = "dashboard.site.GatewayAdminSite"
