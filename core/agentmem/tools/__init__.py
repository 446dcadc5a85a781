"""The one tool core: tool specs and handlers, rendering for models, the MCP server."""
