"""The web console's core, without ROS: the view of the swarm and the arena (:mod:`.view`), what each topic's
message means for it (:mod:`.feed`), the commands a page may send (:mod:`.commands`), the HTTP + WebSocket server
of the page (:mod:`.server`) and the replay of a bag into the same view (:mod:`.replay`). The page itself is
package data (toio_navigator/data/web/). The ROS side is the thin node :mod:`toio_navigator.nodes.web_console`.
"""
