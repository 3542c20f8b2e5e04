/** A confirmation dialog for what cannot be undone; resolves true only when the person confirms. */
export function confirmAction(message, confirmLabel) {
  const dialog = document.getElementById("confirm-dialog");
  const text = document.getElementById("confirm-message");
  const button = document.getElementById("confirm-yes");
  text.textContent = message;
  button.textContent = confirmLabel;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "confirm"), { once: true });
    dialog.showModal();
    document.getElementById("confirm-no").focus();
  });
}
