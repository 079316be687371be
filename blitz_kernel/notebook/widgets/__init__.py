"""The live turn widget: an anywidget TurnView, its state, the coalescing sync, the widget
approver and the controller that wires steer, aside and Stop to a running turn.

Imported only when a turn runs in a kernel (anywidget and ipywidgets load then, not at
`%load_ext`)."""
