// Confirmation of destructive actions: an in-page dialog; for the worst ones the user types the
// name of what goes away.
import {h, mount} from "./dom.js";

// Resolves true when confirmed. `typed`, when set, must be typed exactly to enable the button.
export function confirmAction({title, message, action, typed}) {
  const modal = document.getElementById("modal");
  return new Promise((resolve) => {
    const close = (answer) => { modal.hidden = true; mount(modal); resolve(answer); };
    const confirm = h("button", {class: "danger", id: "confirm-ok", type: "button",
                                 disabled: Boolean(typed), onclick: () => close(true)}, action);
    const input = typed ? h("input", {id: "confirm-typed", autocomplete: "off",
                                      oninput: (e) => { confirm.disabled = e.target.value !== typed; }})
                        : null;
    mount(modal, h("div", {class: "card", role: "dialog"},
                   h("h1", {}, title),
                   h("p", {}, message),
                   typed ? h("p", {}, "Type ", h("b", {}, typed), " to confirm:") : null,
                   input,
                   h("div", {class: "row"},
                     h("button", {id: "confirm-cancel", type: "button", onclick: () => close(false)}, "Cancel"),
                     confirm)));
    modal.hidden = false;
    (input || confirm).focus();
  });
}
