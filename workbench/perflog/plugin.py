"""pytest plugin (placeholder until the printer lands; must stay inert unless enabled)."""
