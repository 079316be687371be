"""`%blitz_help`'s text: every magic with its options and one example, on one screen. Its own
module so that the magics' code stays readable; docs/magics.md is the full reference."""

HELP = """\
blitz_kernel — an agent in your kernel. Magics:

  %%blitz [options]          the cell body is the prompt; runs one turn
      -s/--session NAME  -a/--agent NAME  -m/--model MODEL  --plan  --think off|low|medium|high
      --max-turns N  --max-cost USD  --timeout SECONDS  --tools a,b,c
      --approve ask|allow|deny  -o/--out NAME  --schema NAME  --plain
      example:  %%blitz --max-turns 5 --out r
                What columns does @df have? Plot the numeric ones.
      references: @name  @cell  @cell:N  @cell:-2  @err  @file:path  @fig  (@@ is a literal @)
  %blitz_btw QUESTION        a side question from a read-only copy of the session; nothing
                             is recorded (also %%blitz_btw with the question as the cell body)
  %blitz_compact [--keep N] [-s NAME] [FOCUS ...]
                             summarise older turns to make room, e.g. %blitz_compact the plots
  %blitz_model [MODEL]       show or set the model (litellm name or scripted:PATH)
                             e.g. %blitz_model openai/gpt-4.1-mini
  %blitz_config [key=value]  show or set configuration, e.g. %blitz_config limits.max_turns=10
  %blitz_usage [--session NAME] [--add-budget USD]
                             tokens and cost of a session, per model; lift a spent budget
  %blitz_agent [NAME]        show or set the active agent; %blitz_agents lists them
  %blitz_session [list | new NAME | use NAME | show | snapshot NAME | load SNAPSHOT |
                  search TEXT [--session NAME | --all] | delete NAME]
                             the workspace's sessions (kept in .blitz/blitz.db)
  %blitz_trust [--revoke]    review and trust what this workspace's own config asks for
  %blitz_audit [--session NAME] [--last N] [--tool NAME]
                             every tool call, its decision and who made it
  %blitz_mcp [restart NAME]  MCP servers, their tools and approval policies
  %blitz_clients [--detach NAME | --reattach NAME]
                             outside clients (blitz mcp, blitz acp) and what they called
  %blitz_undo [--files-only | --conversation-only] [--force] [-s NAME]
                             undo the last turn: files, cells, variables and its conversation
  %blitz_rewind N [same options]   undo the last N turns, newest first
  %blitz_truncate N [-s NAME]      drop the last N turns from the conversation only
  %blitz_review [TURN] [--diff] [--revert ID … [--force] | --keep ID … | --keep-all] [-s NAME]
                             a turn's changes with ids; revert or keep them one by one
  %blitz_skills              the skills the agent can load, where each comes from
  %blitz_replay [CELL | --turn N | --index I] [--notebook PATH] [-s NAME] [-o NAME] [--approve allow]
                             re-run a turn's tool calls with no model call, compare results
  %blitz_help                this text

Set a model with BLITZ_MODEL (and BLITZ_API_BASE for an OpenAI-compatible server), with
%blitz_model, or with `model = "..."` in blitz.toml.
"""
