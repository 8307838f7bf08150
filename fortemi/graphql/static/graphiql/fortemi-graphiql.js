// Fortemi's GraphiQL page: a bearer-token field above GraphiQL.
//
// The token is kept in this browser's localStorage and sent as `Authorization: Bearer`
// on every HTTP request and in the WebSocket `connection_init` payload. A header with the
// same name in GraphiQL's own headers editor wins over it. Every endpoint of the API asks
// for a token, introspection included, so GraphiQL is (re)mounted whenever the token
// changes: its schema and docs are fetched again with the new one.
(function () {
  "use strict";

  var STORAGE_KEY = "fortemi.graphiql.token";
  var root = document.getElementById("graphiql");
  var form = document.getElementById("fortemi-token");
  var input = document.getElementById("fortemi-token-input");
  var forget = document.getElementById("fortemi-token-forget");
  var status = document.getElementById("fortemi-token-status");
  var endpoint = root.getAttribute("data-endpoint") || "/graphql";
  var socketUrl =
    (window.location.protocol === "https:" ? "wss://" : "ws://") + window.location.host + endpoint;
  var reactRoot = ReactDOM.createRoot(root);
  var generation = 0;

  function readToken() {
    try {
      return window.localStorage.getItem(STORAGE_KEY) || "";
    } catch (error) {
      return "";
    }
  }

  function writeToken(token) {
    try {
      if (token) {
        window.localStorage.setItem(STORAGE_KEY, token);
      } else {
        window.localStorage.removeItem(STORAGE_KEY);
      }
    } catch (error) {
      // Storage can be off (private windows): the token then lasts until the page closes.
    }
  }

  function show(text, state) {
    status.textContent = text;
    status.setAttribute("data-state", state);
  }

  // Pasting the whole header value, or a token copied with its line break, still works.
  function clean(text) {
    return text.trim().replace(/^bearer\s+/i, "");
  }

  // window.fetch, reading the outcome of each request to tell the user what the server
  // thought of the token (the 401 body's extensions.reason says why it was refused).
  function watchedFetch(token) {
    return function (resource, options) {
      return window.fetch(resource, options).then(function (response) {
        if (response.status === 401) {
          response
            .clone()
            .json()
            .then(function (body) {
              var error = (body && body.errors && body.errors[0]) || {};
              var reason = (error.extensions && error.extensions.reason) || "";
              var message = error.message || "The server refused the request";
              show(
                (token ? "Token refused: " : "No token: ") +
                  message +
                  (reason ? " (" + reason + ")" : ""),
                "refused"
              );
            })
            .catch(function () {
              show("The server refused the token", "refused");
            });
        } else if (response.ok && token) {
          show("Token accepted", "accepted");
        }
        return response;
      });
    };
  }

  function mount(token) {
    var bearer = token ? "Bearer " + token : null;
    var fetcher = GraphiQL.createFetcher({
      url: endpoint,
      subscriptionUrl: socketUrl,
      headers: bearer ? { Authorization: bearer } : {},
      wsConnectionParams: bearer ? { authorization: bearer } : {},
      fetch: watchedFetch(token),
    });
    generation += 1;
    reactRoot.render(
      React.createElement(GraphiQL, {
        key: "fortemi-" + generation,
        fetcher: fetcher,
        isHeadersEditorEnabled: true,
        shouldPersistHeaders: false,
      })
    );
  }

  function use(token) {
    writeToken(token);
    input.value = token;
    if (token) {
      show("Checking the token...", "checking");
    } else {
      show("Enter a bearer token (from `fortemi serve` or `fortemi token`)", "missing");
    }
    mount(token);
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    use(clean(input.value));
  });
  forget.addEventListener("click", function () {
    use("");
  });

  use(readToken());
})();
