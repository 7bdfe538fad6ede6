import { useRef } from 'preact/hooks'

/** An image file as a data: URL, which the page shows as is and sends without its prefix. */
export function readImage (file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result))
    reader.onerror = () => reject(reader.error ?? new Error(`could not read ${file.name}`))
    reader.readAsDataURL(file)
  })
}

/** What /api/chat takes in `images`: the base64 text alone. */
export function base64Of (dataUrl: string): string {
  return dataUrl.slice(dataUrl.indexOf(',') + 1)
}

/** The image files among pasted or picked ones. */
export function imageFiles (files: FileList | null | undefined): File[] {
  return [...(files ?? [])].filter((f) => f.type.startsWith('image/'))
}

/** Images shown with a message: small, each opening full size in a new tab. */
export function Thumbnails ({ images, label }: { images: string[], label: string }) {
  return (
    <ul class="thumbnails" aria-label={label}>
      {images.map((src, i) => <li key={i}><img src={src} alt={`Image ${i + 1}`} /></li>)}
    </ul>
  )
}

interface AttachProps {
  images: string[]
  disabled: boolean
  onAdd: (files: File[]) => void
  onRemove: (index: number) => void
}

/** The composer's image button (a file picker) and the images waiting to be sent, each removable. */
export function Attachments ({ images, disabled, onAdd, onRemove }: AttachProps) {
  const input = useRef<HTMLInputElement>(null)
  return (
    <div class="attachments">
      <input ref={input} id="attach-images" class="visually-hidden" tabIndex={-1} aria-hidden="true" type="file" accept="image/*" multiple disabled={disabled}
        onChange={(e) => { onAdd(imageFiles(e.currentTarget.files)); e.currentTarget.value = '' }} />
      <button type="button" class="attach" disabled={disabled} onClick={() => input.current?.click()}>Attach image</button>
      {images.length > 0
        ? <ul class="thumbnails pending" aria-label="Images to send">
            {images.map((src, i) => (
              <li key={i}>
                <img src={src} alt={`Image ${i + 1} to send`} />
                <button type="button" class="remove-image" aria-label={`Remove image ${i + 1}`} onClick={() => onRemove(i)}>×</button>
              </li>
            ))}
          </ul>
        : null}
    </div>
  )
}
